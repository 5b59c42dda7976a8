package pipeline

import (
	"fmt"
	"strings"

	"github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/blob/cos"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// DriverForStore returns the driver metadata to record for objects written
// to the store c describes, as the stock broker that reads them back
// expects it (docs/brokers.md has the broker.conf side):
//
//	s3   name "aws-s3" (or driverName, e.g. "S3"), bucket, region, the
//	     endpoint as configured ("" for AWS)
//	cos  name "aws-s3" (or driverName, e.g. "aliyun-oss"), bucket
//	     "<name>-<appid>", region, endpoint https://cos.<region>.myqcloud.com
//	     (the S3-compatible service endpoint; the broker adds the bucket to
//	     the host with jclouds.s3.virtual-host-buckets=true)
//	fs   refused: no stock broker reads a tierkeeper fs directory; give
//	     the driver explicitly (tests)
//
// A stock 4.0.8 broker reads back with only the stored bucket; the name,
// region and endpoint are its own configuration's, but are recorded as the
// broker's own offloader records them, so tools that read the metadata
// (pulsar-admin topics internal-info, the sweeper) see where the data is.
func DriverForStore(c client.Config, driverName string) (mledger.Driver, error) {
	p, err := c.Provider()
	if err != nil {
		return mledger.Driver{}, err
	}
	name := driverName
	if name == "" {
		name = "aws-s3"
	}
	var d mledger.Driver
	switch v := p.(type) {
	case *s3.Config:
		w := v.WithDefaults()
		d = mledger.Driver{Name: name, Bucket: w.Bucket, Region: w.Region, ServiceEndpoint: strings.TrimRight(w.Endpoint, "/")}
	case *cos.Config:
		w := v.WithDefaults()
		d = mledger.Driver{Name: name, Bucket: w.Bucket, Region: w.Region,
			ServiceEndpoint: "https://cos." + w.Region + ".myqcloud.com"}
	case *fs.Config:
		if driverName == "" {
			return mledger.Driver{}, fmt.Errorf("an fs store (%s) has no broker driver: no stock broker reads it; give the driver explicitly", v.Dir)
		}
		d = mledger.Driver{Name: name, Bucket: v.Dir}
	default:
		return mledger.Driver{}, fmt.Errorf("no broker driver for store type %q", c.Type)
	}
	if _, err := d.Metadata(); err != nil {
		return mledger.Driver{}, err
	}
	return d, nil
}
