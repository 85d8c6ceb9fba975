// The learner's network: a small VPC whose GPU hosts reach S3 through a gateway endpoint and everything else
// (ECR, SQS, CloudWatch) over HTTPS. No NAT by default: public subnets, public IPs, no inbound rule at all.
import { RemovalPolicy } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

export interface LearnerNetworkProps {
  readonly natGateways: number;
  readonly logRetention: logs.RetentionDays;
  /**
   * A multi-node learner: hosts in one Availability Zone (a cluster placement group cannot span two), and all
   * traffic allowed between the learner's own hosts (torchrun's rendezvous, NCCL or gloo between nodes, EFA).
   */
  readonly multiNode?: boolean;
}

export class LearnerNetwork extends Construct {
  readonly vpc: ec2.Vpc;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: LearnerNetworkProps) {
    super(scope, id);
    const isolatedByNat = props.natGateways > 0;
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 3,
      natGateways: props.natGateways,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        ...(isolatedByNat
          ? [{ name: 'hosts', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 20 }]
          : []),
      ],
      gatewayEndpoints: { S3: { service: ec2.GatewayVpcEndpointAwsService.S3 } },
      flowLogs: {
        rejected: {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(
            new logs.LogGroup(this, 'FlowLogs', {
              retention: props.logRetention,
              removalPolicy: RemovalPolicy.DESTROY,
            }),
          ),
          trafficType: ec2.FlowLogTrafficType.REJECT,
        },
      },
    });
    this.subnets = {
      subnetType: isolatedByNat ? ec2.SubnetType.PRIVATE_WITH_EGRESS : ec2.SubnetType.PUBLIC,
      ...(props.multiNode ? { availabilityZones: [this.vpc.availabilityZones[0]!] } : {}),
    };
    this.securityGroup = new ec2.SecurityGroup(this, 'Hosts', {
      vpc: this.vpc,
      description: props.multiNode
        ? 'toolrl learner hosts: inbound from each other only, HTTPS out, all traffic between them'
        : 'toolrl learner hosts: no inbound, HTTPS out (ECR, S3, SQS, CloudWatch, Hugging Face)',
      allowAllOutbound: false,
    });
    this.securityGroup.addEgressRule(
      ec2.Peer.anyIpv4(),
      ec2.Port.tcp(443),
      'HTTPS to AWS APIs and model hubs',
    );
    if (props.multiNode) {
      // The group itself as the peer, not its id: CDK then writes both rules as their own resources, where an
      // inline rule naming the group's own id is a circular dependency CloudFormation refuses.
      const self = this.securityGroup;
      this.securityGroup.addIngressRule(
        self,
        ec2.Port.allTraffic(),
        'learner nodes: rendezvous, NCCL/gloo, EFA',
      );
      this.securityGroup.addEgressRule(
        self,
        ec2.Port.allTraffic(),
        'learner nodes: rendezvous, NCCL/gloo, EFA',
      );
    }
  }
}
